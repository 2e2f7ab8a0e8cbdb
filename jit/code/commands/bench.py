"""Build a benchmark of real Warp kernels that run on the CPU with recorded inputs and outputs.

  jit-synth bench build [SOURCE...] --output DIR [--exclude DATASET...]

Each SOURCE is a dataset folder that `jit-synth extract` or `jit-synth trace` wrote, or a
target as `jit-synth extract` takes it (a .py file, a folder, an importable package), which is
extracted first by the same engine (compiled for CPU and CUDA). Without SOURCE, the kernels are
the *measure* half of the installed Warp's examples and tests (the realism reference,
`jit/code/analysis/reference.py`; the seed half feeds the mutants and is never measured), each
without its test scaffolding, so the command works on a fresh install.

A kernel is kept when its Python text rebuilds it alone (metadata.self_contained), a launch can
be read from its code (grid, array shapes, value ranges, which arrays are outputs: the mutants'
launch inference) and runs in bounds in Warp's debug mode, and a CPU run on inputs drawn from
--seed and the record id gives finite, repeatable outputs (the `execute` check, which also checks
gradients). Each record keeps that example as `io` and gets metadata.bench: a tier (easy,
medium, hard, from code lines, loops, structs, helpers, tiles and queries), the features behind
it and the export tasks it can serve. --exclude drops the kernels whose Python nearly duplicates
one of a training set (the test of `generate --exclude`).

DIR gets data/test-00000-of-00001.jsonl (ids are the records' content ids, kept by `export`),
bench.json (counts per tier and task, what was left out and why) and the card README.md.
Exit status: 0 done, 1 no kernel qualified, 2 bad SOURCE or option.

examples:
  jit-synth bench build --output out/bench
  jit-synth bench build out/warp-real --output out/bench-real --exclude out/train
  jit-synth bench build my_sim/ --output out/bench-mine --emit-ptx
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import sys
import tempfile
import time

from jit.code.commands import common as options
from jit.code.commands.common import UsageError

HELP = "build a benchmark of real kernels with recorded inputs and outputs (bench build)"
VERIFY_BATCH = 24


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    p = sub.add_parser("build", help="build a benchmark folder", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sources", metavar="SOURCE", nargs="*",
                   help="dataset folder, .py file, folder or package (default: Warp's measure-half examples and tests)")
    p.add_argument("--output", "-o", required=True, help="benchmark folder to write")
    p.add_argument("--exclude", metavar="DATASET", nargs="+", action="extend", default=[],
                   help="drop kernels that nearly duplicate a Python source of these training sets "
                        "(dataset folders, JSONL files or folders of .py files)")
    p.add_argument("--seed", type=int, default=0, help="seed of the recorded inputs (default 0)")
    p.add_argument("--workers", type=options.positive("--workers"), default=1,
                   help="worker processes for extraction (default 1)")
    p.add_argument("--emit-ptx", action="store_true", help="extract PTX too, for the py2ptx task")
    p.add_argument("--overwrite", action="store_true", help="replace an existing benchmark in --output")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress output")


def run(args, parser=None) -> int:
    prog = args.prog
    t0 = time.perf_counter()
    try:
        out = check_output(args.output, args.overwrite)
        excludes = [options.exclusion_path(p) for p in args.exclude]
        datasets, targets = split_sources(args.sources)
    except UsageError as exc:
        return options.error(prog, exc)
    from jit.code.evaluation import bench

    # a fixed scratch path per output: Warp writes a helper's file path into its generated code
    scratch = os.path.join(tempfile.gettempdir(), "jit-synth-bench-" + hashlib.sha256(out.encode()).hexdigest()[:10])
    shutil.rmtree(scratch, ignore_errors=True)
    try:
        provenance = {"source": ", ".join(args.sources) or "the measure half of Warp's examples and tests"}
        origins = {}
        if not args.sources:
            origins = stage_reference(os.path.join(scratch, "kernels"))
            targets = [os.path.join(scratch, "kernels")]
        records = [r for d in datasets for r in read_dataset(d)]
        if targets:
            status, extracted = extract(targets, os.path.join(scratch, "extracted"), args)
            if status:
                return status
            records += [with_origin(r, origins) for r in extracted]
        candidates, skipped = with_launches(records, args.quiet)
        if not args.quiet:
            print(f"{len(candidates)} of {len(records)} kernels have a launch; running them on the CPU", file=sys.stderr)
        if os.path.exists(out):
            shutil.rmtree(out)
        info = bench.build(candidates, out, args.seed, excludes, provenance)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    info["rejects"].update(skipped)
    info["seconds"] = round(time.perf_counter() - t0, 1)
    from jit.code.engine import writers

    writers.write_json(os.path.join(out, bench.BENCH_FILE), info)
    writers.write_atomic(os.path.join(out, "README.md"), bench.card(info))
    if not args.quiet:
        tiers = ", ".join(f"{n} {t}" for t, n in info["tiers"].items())
        print(f"wrote {info['count']} kernels to {out} ({tiers}) in {info['seconds']} s")
    return 0 if info["count"] else 1


def check_output(path: str, overwrite: bool) -> str:
    out = os.path.abspath(path)
    if os.path.isfile(out):
        raise UsageError(f"--output {path} is a file; give a folder for the benchmark")
    if os.path.isdir(out) and os.listdir(out) and not overwrite:
        raise UsageError(f"--output {path} is not empty; choose another folder or pass --overwrite")
    return out


def split_sources(sources: list[str]) -> tuple[list[str], list[str]]:
    """(dataset folders, extract targets); a target that does not exist is a UsageError now."""
    from jit.code.engine import writers
    from jit.code.harvest.modules import TargetNotFound, resolve_target

    datasets, targets = [], []
    for s in sources:
        if os.path.isdir(s) and writers.data_files(s):
            datasets.append(s)
            continue
        try:
            resolve_target(s)
        except TargetNotFound as exc:
            raise UsageError(f"SOURCE {exc}; give a dataset folder, a .py file, a folder or an importable package") \
                from None
        targets.append(s)
    return datasets, targets


def read_dataset(folder: str) -> list[dict]:
    from jit.code.engine import writers

    return list(writers.read_dataset(folder))


def stage_reference(folder: str, half: str = "measure") -> dict[str, dict]:
    """Write one half's self-contained kernels (the benchmark's: the measure half), without test
    scaffolding, one file each; {file name: where the kernel is in Warp}."""
    from jit.code.analysis import reference
    from jit.code.synthesis.mutate import seed_list

    os.makedirs(folder)
    dist = reference.distribution()
    origins = {}
    for n, kernel in enumerate(k for k in reference.kernels(half) if k.self_contained and not k.generic):
        made = seed_list.prepare(kernel)
        if isinstance(made, str):
            continue
        name, text = made
        file = f"{os.path.splitext(os.path.basename(kernel.path))[0]}_{n:04d}_{name}.py"
        with open(os.path.join(folder, file), "w", encoding="utf-8") as f:
            f.write(text)
        origins[file] = {"distribution": dist["name"], "distribution_version": dist["version"],
                         "license": dist["license"], "file": kernel.path, "line": kernel.line, "name": kernel.name}
    return origins


def with_origin(record: dict, origins: dict[str, dict]) -> dict:
    """A staged kernel's record says where the kernel is in Warp, not where it was staged."""
    origin = dict(origins.get(os.path.basename((record.get("metadata") or {}).get("file") or "")) or {})
    if not origin:
        return record
    meta = dict(record["metadata"], module=None, reference_name=origin.pop("name"), **origin)
    return dict(record, metadata=meta)


def extract(targets: list[str], out: str, args) -> tuple[int, list[dict]]:
    """Run `extract`'s engine on ``targets`` into ``out``; (status, records)."""
    from jit.code.checks import resolve
    from jit.code.engine import run as engine
    from jit.code.harvest.modules import ModuleKernels

    spec = engine.RunSpec(out=out, source=ModuleKernels.resolve(targets), devices=("cpu", "cuda"),
                          validate="compile", checks=resolve("compile"), emit_ptx=args.emit_ptx,
                          near_dup_threshold=0.0, shard_size=100000)
    engine.prepare_output(spec, resume=False, overwrite=True)
    try:
        engine.build_dataset(spec, args.workers, args.quiet, "jit-synth bench build")
    except Exception as exc:  # noqa: BLE001  one line, whatever the engine met
        return options.error(args.prog, f"extracting {', '.join(targets)} failed: {exc}"), []
    return 0, read_dataset(out)


def with_launches(records: list[dict], quiet: bool = True) -> tuple[list[dict], dict[str, int]]:
    """The records that run: each with ``metadata["launch"]`` (kept when it has one, else read
    from its code and run in bounds in debug mode); skipped ones counted by reason."""
    from jit.code.checks.rebuild import batches
    from jit.code.synthesis.mutate import verify
    from jit.code.synthesis.mutate.infer import differentiable, infer
    from jit.code.synthesis.mutate.syntax import uses_tiles
    from jit.code.synthesis.mutate.unit import Unit

    skipped: dict[str, int] = {}

    def skip(why: str) -> None:
        skipped[why] = skipped.get(why, 0) + 1

    ready, todo = [], {}
    for r in records:
        meta = r.get("metadata") or {}
        if meta.get("launch") and meta["launch"].get("runnable", True) and not meta["launch"].get("reason"):
            ready.append(r)
        elif meta.get("self_contained") is False:
            skip("text does not rebuild the kernel alone")
        elif meta.get("overload") or meta.get("generic_parent"):
            skip("generic kernel")
        else:
            try:
                unit = Unit(r["python_source"], r["kernel_name"])
                block_dim = 64 if uses_tiles(unit.tree) else None
                launch = infer(unit, block_dim)
            except Exception as exc:  # noqa: BLE001  real code the inference does not read
                skip(f"no launch: {type(exc).__name__}")
                continue
            if launch.reason:  # counted by kind: "needs a wp.Mesh", not which parameter
                skip("no launch: " + re.sub(r"parameter \w+ ", "parameter ", launch.reason.split(" (")[0]))
                continue
            todo[r["id"]] = (r, unit, launch)
    for group in batches([r for r, _, _ in todo.values()], VERIFY_BATCH):
        ran = verify.verify([verify.Candidate(r["id"], r["kernel_name"], r["python_source"], todo[r["id"]][2])
                             for r in group])
        for r in group:
            launch = ran.get(r["id"])
            if isinstance(launch, str) or launch is None:
                skip(f"launch does not run: {launch}")
                continue
            row = launch.to_dict()
            outputs = [a["name"] for a in row["args"] if a["role"] in ("out", "inout")]
            meta = dict(r.get("metadata") or {}, launch=row,
                        differentiable_outputs=outputs if differentiable(todo[r["id"]][1].kernel) else [])
            ready.append(dict(r, metadata=meta))
    return ready, skipped


def main(argv: list[str] | None = None) -> int:
    return options.main_of(sys.modules[__name__], "jit-synth bench", argv)
