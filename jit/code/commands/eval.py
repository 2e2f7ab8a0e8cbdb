"""Score a model's predictions on a benchmark (`jit-synth bench build`) for one export task.

  jit-synth eval PREDICTIONS --bench DIR --task TASK [--output OUT]
  jit-synth eval --baseline oracle --bench DIR --task TASK
  jit-synth eval --baseline retrieval --train DATASET --bench DIR --task TASK

PREDICTIONS is JSONL of {"id": ..., "prediction": ...}: ids of the benchmark (those of its
exported test split: `jit-synth export DIR --task TASK --output OUT` keeps them), several lines
per id for pass@k; a Markdown code fence around a prediction is removed. Each prediction is
scored on its text (exact, exact after whitespace normalisation, exact after renumbering Warp's
var_N temporaries and hash suffixes, chrF), whether it compiles (Warp's build for Python,
Warp's clang for C++, NVRTC for CUDA: no GPU needed), and whether it runs and matches: for
cuda2py and purpose2py the predicted kernel is built and launched by Warp, for py2cpp the
predicted C++ replaces Warp's generated code in the module, is compiled with Warp's clang and
launched through Warp; outputs must equal the reference's within the dtype's tolerance on the
stored inputs and on inputs drawn afresh from --seed (default: a new seed each run, printed).
py2cuda and py2cuda-adjoint are compile-only here (no GPU); py2ptx is scored on text only.

Predictions are untrusted code: each is built and run in a forked child bounded in time
(--timeout), memory and file size, in a scratch folder removed afterwards, and never given the
reference outputs; a prediction that hangs, crashes or fails to build is scored as failed.

--baseline oracle scores Warp's own output (it must score 100%); --baseline retrieval answers
each kernel with the nearest training record's answer by prompt 4-gram similarity, names mapped.

Prints a table per tier; with --output, writes OUT/eval.json (the table's figures, pass@k) and
OUT/predictions.jsonl (one row per prediction: every score, the compile error text, the first
mismatching output). Exit status: 0 scored, 2 bad input or option.

examples:
  jit-synth eval preds.jsonl --bench out/bench --task py2cpp --output out/eval-py2cpp
  jit-synth eval --baseline retrieval --train out/train --bench out/bench --task cuda2py
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys

from jit.code import export
from jit.code.commands import common as options
from jit.code.commands.common import UsageError

HELP = "score predictions (or a baseline) on a benchmark: text, compile, run and match, pass@k"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("predictions", metavar="PREDICTIONS", nargs="?", help="JSONL of {\"id\", \"prediction\"} lines")
    p.add_argument("--bench", required=True, metavar="DIR", help="benchmark folder (jit-synth bench build)")
    p.add_argument("--task", required=True, choices=sorted(export.TASKS), help="the export task predicted")
    p.add_argument("--output", "-o", metavar="OUT", help="folder for eval.json and predictions.jsonl")
    p.add_argument("--baseline", choices=("oracle", "retrieval"), help="score a baseline instead of PREDICTIONS")
    p.add_argument("--train", metavar="DATASET", help="training dataset of the retrieval baseline")
    p.add_argument("--seed", type=int, default=None, help="seed of the fresh inputs (default: a new one each run)")
    p.add_argument("--timeout", type=float, default=60.0, metavar="S", help="seconds per prediction (default 60)")
    p.add_argument("--quiet", "-q", action="store_true", help="only the table")


def predictions(args, records: dict) -> dict[str, list[str]]:
    from jit.code.engine import writers
    from jit.code.evaluation import baselines, predictions as reading

    if args.baseline and args.predictions:
        raise UsageError("give PREDICTIONS or --baseline, not both")
    if args.baseline == "oracle":
        return baselines.oracle(records, args.task)
    if args.baseline == "retrieval":
        if not args.train:
            raise UsageError("--baseline retrieval needs --train DATASET (a dataset folder to retrieve from)")
        if not os.path.isdir(args.train) or not writers.data_files(args.train):
            raise UsageError(f"--train {args.train}: no dataset shards there; give a folder written by generate or extract")
        try:
            return baselines.retrieval(records, args.task, list(writers.read_dataset(args.train)))
        except ValueError as exc:
            raise UsageError(f"--train {args.train}: {exc}") from None
    if args.train:
        raise UsageError("--train is for --baseline retrieval")
    if not args.predictions:
        raise UsageError("give PREDICTIONS (a JSONL file) or --baseline oracle|retrieval")
    try:
        return reading.read(args.predictions, set(records))
    except reading.PredictionsError as exc:
        raise UsageError(str(exc)) from None


def run(args, parser=None) -> int:
    from jit.code.evaluation import bench, score

    try:
        if args.timeout <= 0:
            raise UsageError(f"--timeout must be positive, got {args.timeout:g}")
        if args.output and os.path.isfile(args.output):
            raise UsageError(f"--output {args.output} is a file; give a folder")
        try:
            info, records = bench.read(args.bench)
        except bench.BenchError as exc:
            raise UsageError(str(exc)) from None
        records = score.applicable(records, args.task)
        if not records:
            raise UsageError(f"the benchmark {args.bench} has no kernel for {args.task} (see its README.md)")
        grouped = predictions(args, records)
    except UsageError as exc:
        return options.error(args.prog, exc)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    if not args.quiet:
        total = sum(len(v) for v in grouped.values())
        print(f"scoring {total} predictions for {len(records)} kernels ({args.task}); fresh inputs from seed {seed}",
              file=sys.stderr)
    rows, result = score.evaluate(args.task, records, grouped, seed, args.timeout)
    result.update(bench=os.path.abspath(args.bench), source=args.baseline or os.path.abspath(args.predictions))
    print(score.table(result))
    if args.output:
        from jit.code.engine import writers

        os.makedirs(args.output, exist_ok=True)
        writers.write_atomic(os.path.join(args.output, "predictions.jsonl"),
                             "".join(json.dumps(r) + "\n" for r in rows))
        writers.write_json(os.path.join(args.output, "eval.json"), result)
        if not args.quiet:
            print(f"wrote {args.output}/eval.json and predictions.jsonl", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    return options.main_of(sys.modules[__name__], "jit-synth eval", argv)
