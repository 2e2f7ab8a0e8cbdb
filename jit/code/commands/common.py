"""What the commands share: one-line usage errors, running a command alone, and the options of
every dataset-writing command (generate, extract, trace).

``add_arguments(parser, ...)`` adds the dataset options; ``run_spec(args, source)`` checks them
and makes the engine's ``RunSpec``; ``run(prog, args, spec)`` prepares the output folder, runs
the engine and prints the summary line. Each command adds its own options (what its source
needs). ``main_of(module, prog, argv)`` runs one command module by itself (its ``main``).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys

from jit.code.engine import run as engine
from jit.code.records import DEVICE_CHOICES


class UsageError(Exception):
    """Bad command-line input: reported in one line with exit code 2."""


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports a usage error in one line (no usage dump) and exits 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def command_parser(parser: argparse.ArgumentParser, module) -> argparse.ArgumentParser:
    """``parser`` set up for a command module: its docstring as description, its arguments, its run."""
    parser.description = module.__doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    module.add_arguments(parser)
    parser.set_defaults(run=module.run, prog=parser.prog)
    return parser


def main_of(module, prog: str, argv: list[str] | None = None) -> int:
    """Run one command module on ``argv`` by itself (what ``jit-synth COMMAND`` runs)."""
    parser = command_parser(OneLineParser(prog=prog), module)
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    args.argv = argv
    return args.run(args, parser)


def error(prog: str, message) -> int:
    print(f"{prog}: error: {message}", file=sys.stderr)
    return 2


def positive(name):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a whole number, got {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{name} must be at least 1, got {value}")
        return value
    return parse


def threshold(text: str) -> float:
    """--near-dup-threshold: a Jaccard similarity in [0, 1]; 0 or "off" switches the control off."""
    if text.strip().lower() == "off":
        return 0.0
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--near-dup-threshold takes a number in [0, 1] or off, got {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"--near-dup-threshold must be in [0, 1] (0 or off: no control), got {value:g}")
    return value


def add_arguments(p: argparse.ArgumentParser, output_default: str | None = "out/dataset",
                  near_dup_default: float = 0.9, validate_choices=("none", "compile")) -> None:
    p.add_argument("--device", choices=sorted(DEVICE_CHOICES), default="both", help="code to extract (default both)")
    if output_default is None:
        p.add_argument("--output", "-o", required=True, help="dataset folder to write")
    else:
        p.add_argument("--output", "-o", default=output_default, help=f"dataset folder (default {output_default})")
    p.add_argument("--workers", type=positive("--workers"), default=os.cpu_count() or 1,
                   help="worker processes (default: all cores)")
    p.add_argument("--shard-size", type=positive("--shard-size"), default=1000, help="records per shard (default 1000)")
    p.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl",
                   help="shard format (parquet needs: pip install 'warp-jit-synth[parquet]')")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--resume", action="store_true", help="continue an interrupted run in --output")
    group.add_argument("--overwrite", action="store_true", help="replace an existing dataset in --output")
    helps = {"none": "none: codegen only", "compile": "compile: compile every pair for CPU (clang) and CUDA (NVRTC, no GPU needed)",
             "execute": "execute: also run on the CPU and check gradients"}
    p.add_argument("--validate", default="compile", metavar="{" + ",".join(validate_choices) + "}|CHECK,...",
                   help="; ".join(helps[c] for c in validate_choices) + " (default compile). Every word also runs "
                        "the semantic gate (no-ops, constants per thread, values never used, flags that gate "
                        "nothing); or name the checks: semantic, compile, execute")
    p.set_defaults(validate_words=validate_choices)
    off = "off" if not near_dup_default else near_dup_default
    p.add_argument("--near-dup-threshold", type=threshold, default=near_dup_default, metavar="J",
                   help="drop a kernel when the Jaccard similarity of its normalised-token 4-gram set with an earlier "
                        "kept kernel's is J or more (MinHash estimate); 0 or off keeps near-duplicates (exact "
                        f"duplicates are always dropped) (default {off})")
    p.add_argument("--exclude", metavar="PATH", default=None,
                   help="drop every record whose Python source is a near-duplicate of one in PATH: a dataset folder, "
                        "a JSONL file or a folder of .py files (e.g. an evaluation set); counted in stats.json")
    p.add_argument("--splits", default=None, metavar="NAME=F,...",
                   help="write several splits, e.g. train=0.9,validation=0.05,test=0.05; near-duplicates, mutants of "
                        "one seed kernel and kernels of one source file stay in one split (default: one train split)")
    p.add_argument("--arch", default="90", help="CUDA arch(s) for NVRTC, comma-separated (default 90)")
    p.add_argument("--emit-ptx", action="store_true", help="add the PTX of each kernel (field cuda_ptx)")
    p.add_argument("--no-backward", action="store_true", help="skip backward (adjoint) code")
    p.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="local: worker processes on this machine; ray: shard tasks on a Ray cluster "
                        "(pip install 'warp-jit-synth[ray]'; --output must be on storage every node sees)")
    p.add_argument("--ray-address", default=None,
                   help="Ray cluster to join (default: RAY_ADDRESS or a running cluster, else start a local one)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress output")


def archs(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(a) for a in text.split(",") if a.strip())
    except ValueError:
        raise UsageError(f"--arch takes numbers such as 90 or 80,90, got {text!r}") from None
    if not values or any(a < 50 for a in values):
        raise UsageError(f"--arch takes compute capabilities such as 75, 80, 90, got {text!r}")
    return values


def checks(text: str, words: tuple[str, ...]) -> tuple[str, ...]:
    from jit.code.checks import ALIASES, UnknownCheck, resolve

    if text in ALIASES and text not in words:
        raise UsageError(f"--validate {text} is not available here; choose from {', '.join(words)} or name checks")
    try:
        return resolve(text)
    except UnknownCheck as exc:
        raise UsageError(f"--validate: {exc}") from None


def splits(text: str | None) -> tuple[tuple[str, float], ...] | None:
    if not text:
        return None
    from jit.code.engine.splits import parse_splits

    try:
        return tuple(parse_splits(text).items())
    except ValueError as exc:
        raise UsageError(f"--splits: {exc}") from None


def exclusion_path(path: str | None) -> str | None:
    if path is None:
        return None
    if not os.path.exists(path):
        raise UsageError(f"--exclude {path}: no such file or folder; give a dataset folder, a JSONL file or a folder of .py files")
    from jit.code.engine import exclude

    try:
        if next(exclude.sources(path), None) is None:  # fail now, in one line, rather than after the run
            raise ValueError(f"{path} holds no Python sources to exclude")
    except ValueError as exc:
        raise UsageError(f"--exclude {path}: {exc}") from None
    return os.path.abspath(path)


def run_spec(args, source, count: int | None = None) -> engine.RunSpec:
    """The engine's run from the shared options; raises ``UsageError``."""
    devices = DEVICE_CHOICES[args.device]
    if getattr(args, "executor", "local") == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise UsageError("--executor ray needs Ray: pip install 'warp-jit-synth[ray]'") from None
    if args.emit_ptx and "cuda" not in devices:
        raise UsageError("--emit-ptx needs CUDA code: use --device cuda or --device both")
    if args.format == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise UsageError("--format parquet needs pyarrow: pip install 'warp-jit-synth[parquet]'") from None
    return engine.RunSpec(
        out=os.path.abspath(args.output), count=count, source=source, devices=devices, shard_size=args.shard_size,
        backward=not args.no_backward, validate=args.validate, checks=checks(args.validate, args.validate_words),
        archs=archs(args.arch), emit_ptx=args.emit_ptx,
        fmt=args.format, near_dup_threshold=args.near_dup_threshold, splits=splits(args.splits),
        exclude=exclusion_path(args.exclude),
    )


def command_line(prog: str, args) -> str:
    return (prog + " " + " ".join(shlex.quote(a) for a in getattr(args, "argv", []) or [])).strip()


def run(prog: str, args, run: engine.RunSpec, before=None) -> int:
    """Prepare the output, call ``before(run)`` (e.g. run a traced program), run the engine, report."""
    from jit.code.engine.ray_executor import ClusterError

    try:
        finished = engine.prepare_output(run, args.resume, args.overwrite, prog)
    except engine.OutputError as exc:
        return error(prog, exc)
    if finished:
        if not args.quiet:
            print(f"{run.out} is complete already: nothing to do")
        return 0
    if before is not None:
        status = before(run)
        if status:
            return status
    try:
        stats = engine.build_dataset(run, args.workers, args.quiet, command_line(prog, args), args.executor,
                                     args.ray_address)
    except ClusterError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 1
    if not args.quiet:
        rejected = sum(stats["rejects"].values())
        splits_note = "" if list(stats["splits"]) == ["train"] else f" in splits {stats['splits']}"
        print(f"wrote {stats['count']} pairs to {run.out}/data{splits_note} ({stats['pairs_per_second']} pairs/s, "
              f"{rejected} rejected: {stats['rejects']})")
    return 0
