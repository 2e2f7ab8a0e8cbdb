"""What the eval harness itself is worth: the oracle's scores, the corruption fail rate, throughput.

On a benchmark folder (``jit-synth bench build``), for each task:

- the oracle (Warp's own output) must score 100% exact, compile and run-and-match (CUDA tasks:
  NVRTC compile; py2ptx: text only);
- seeded corruptions of the reference (an operator changed, a statement dropped, an index
  shifted, a gradient term removed; ``jit.code.evaluation.corruptions``) on the tasks that run
  on the CPU: the share that fails run-and-match (adjoint code is corrupted only where the
  benchmark's gradient check passed, since only then does a run execute it);
- predictions per second, one process (the machine's other core is left to the compiler): the
  oracle's, each prediction compiled and run in its own sandboxed child, with the precompiled
  header of Warp's CPU builds made once by the process and copied into each child
  (``sandbox.Headers``; the seconds that takes are reported apart). Each kernel's reference runs
  once on the fresh inputs whatever the number of samples, so ``--samples 5`` (five copies of
  the oracle per kernel, as for pass@5) shows the rate per prediction when sampling.

    python jit/benchmarks/eval_harness.py --bench out/bench --limit 60 --output out/eval-harness.json
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import random
import sys
import time

from jit.code.evaluation import baselines, bench, corruptions, score

RUN_TASKS = {"py2cpp": "cpp", "cuda2py": "python", "purpose2py": "python"}
# the module code a corrupted answer is built with but does not hold: py2cpp keeps Warp's backward kernel
CONTEXT = {"py2cpp": lambda record: record.get("cpu_backward") or ""}


def oracle(task: str, records: dict, seed: int, samples: int = 1) -> dict:
    todo = score.applicable(records, task)
    grouped = {rid: answers * samples for rid, answers in baselines.oracle(todo, task).items()}
    t0 = time.perf_counter()
    rows, result = score.evaluate(task, todo, grouped, seed)
    figures = result["tiers"]["all"]
    failed = [{"id": r["id"], "error": r["error"], "mismatch": r["mismatch"]} for r in rows if not r["passed"]]
    return {"kernels": len(todo), "exact": figures["exact"], "renamed": figures["renamed"],
            "compiles": figures["compiles"], "matches": figures["matches"], "pass@1": figures["pass@1"],
            "predictions_per_second": round(len(rows) / (time.perf_counter() - t0), 2), "failed": failed[:10]}


def corrupted(task: str, records: dict, seed: int) -> dict:
    todo = score.applicable(records, task)
    grouped, kinds, changes = {}, {}, {}
    for rid, record in todo.items():
        reference = baselines.oracle({rid: record}, task)[rid][0]
        graded = (record.get("validation") or {}).get("gradient") == "passed"
        for kind in corruptions.KINDS:
            bad = corruptions.corrupt(reference, RUN_TASKS[task], kind, random.Random(f"{seed}:{rid}:{kind}"),
                                      forward_only=not graded, context=CONTEXT.get(task, lambda r: "")(record))
            if bad is not None and bad != reference:
                grouped.setdefault(rid, []).append(bad)
                kinds[(rid, len(grouped[rid]) - 1)] = kind
                plain = ast.unparse(ast.parse(reference)) + "\n" if RUN_TASKS[task] == "python" else reference
                changes[(rid, len(grouped[rid]) - 1)] = change(plain, bad)
    t0 = time.perf_counter()
    rows, _ = score.evaluate(task, todo, grouped, seed)
    per_kind: dict[str, list[int]] = {}
    survivors = []
    for r in rows:
        kind = kinds[(r["id"], r["n"])]
        per_kind.setdefault(kind, [0, 0])
        per_kind[kind][1] += 1
        if not r["matches"]:
            per_kind[kind][0] += 1
        else:
            survivors.append({"id": r["id"], "kind": kind, "change": changes[(r["id"], r["n"])]})
    total = len(rows)
    failed = sum(not r["matches"] for r in rows)
    return {"corruptions": total, "fail_rate": round(100 * failed / total, 2) if total else None,
            "per_kind": {k: {"failed": f, "of": n} for k, (f, n) in sorted(per_kind.items())},
            "survivors": survivors[:200], "predictions_per_second": round(total / (time.perf_counter() - t0), 2)}


def change(reference: str, corrupted: str) -> list[str]:
    """The lines a corruption took out (-) and put in (+), for reading the survivors."""
    lines = difflib.unified_diff(reference.splitlines(), corrupted.splitlines(), lineterm="", n=0)
    return [line.strip() for line in lines if line[:1] in "+-" and not line.startswith(("+++", "---"))][:4]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", required=True, help="benchmark folder")
    p.add_argument("--tasks", default="py2cpp,cuda2py,purpose2py,py2cuda,py2cuda-adjoint,py2ptx")
    p.add_argument("--limit", type=int, default=None, help="first N kernels by id (default: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--samples", type=int, default=1, help="oracle predictions per kernel (default 1)")
    p.add_argument("--measure", default="oracle,corruptions", help="what to measure (default both)")
    p.add_argument("--output", help="JSON file for the figures")
    args = p.parse_args(argv)
    _, records = bench.read(args.bench)
    if args.limit:
        records = dict(sorted(records.items())[: args.limit])
    t0 = time.perf_counter()
    warm = score.warm_headers() is not None
    out = {"bench": args.bench, "kernels": len(records), "seed": args.seed, "samples": args.samples,
           "precompiled_headers": {"kept": warm, "seconds": round(time.perf_counter() - t0, 2)},
           "oracle": {}, "corruptions": {}}
    for task in args.tasks.split(","):
        if not score.applicable(records, task):
            continue
        if "oracle" in args.measure:
            out["oracle"][task] = oracle(task, records, args.seed, args.samples)
            print(task, "oracle", json.dumps(out["oracle"][task]), file=sys.stderr, flush=True)
        if task in RUN_TASKS and "corruptions" in args.measure:
            out["corruptions"][task] = corrupted(task, records, args.seed)
            print(task, "corruptions", json.dumps(out["corruptions"][task]), file=sys.stderr, flush=True)
    text = json.dumps(out, indent=2)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
