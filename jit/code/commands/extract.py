"""Extract training pairs from existing Warp code: files, folders and packages, into a dataset.

Each TARGET is a path to a .py file, a folder (searched recursively for .py files), or the
name of an importable module or package (every submodule is imported). Every concrete kernel
they define (each registered overload of a generic kernel) becomes one record, once across all
targets (deduplicated by content id). The dataset folder is the one `jit-synth generate` writes:
DIR/data/train-*.jsonl|parquet, DIR/stats.json and the card DIR/README.md, with the same
--validate, --resume/--overwrite, --workers, --shard-size, --splits and --exclude, and the same
records for any --workers (each part of the module list is imported in a fresh process).

  python_source    the kernel with the @wp.func helpers, @wp.structs and module-level constants it
                   uses: it rebuilds the kernel on its own (metadata.self_contained; when it cannot,
                   metadata.self_contained_reason says why and the id includes the code)
  <dev>_forward    the forward function; on CPU preceded by the wp_args_<kernel> struct
  <dev>_functions  the generated structs, helper forwards and helper adjoints it needs
  metadata         found_by "module", distribution, distribution_version, license, module, file
                   (relative to the distribution), line, overload signature, per-device options

The code is what Warp compiles when the kernel is launched with default launch options (use
`jit-synth trace` for the options a real program launches with, and for kernels made while it
runs). Global wp.config changes an imported module makes are listed in metadata.config_changes
and undone after its import. A module that fails to import, or a kernel that fails to extract,
is reported on stderr and skipped (counted in stats.json); near-duplicate control is off by
default (every concrete kernel is kept once). Files are imported by path under a private module
name, so a file that imports its siblings by plain name fails to import unless its folder is on
the import path. Exit status: 0 done, 1 nothing could be extracted, 2 bad TARGET or option.

examples:
  jit-synth extract warp.examples warp.tests --output out/warp-real --validate compile
  jit-synth extract my_sim/ other/kernels.py --device cuda --output out/my-sim --splits train=0.9,test=0.1
"""

from __future__ import annotations

import sys

from jit.code.commands import common as options
from jit.code.commands.common import UsageError
from jit.code.engine import writers
from jit.code.harvest.modules import ModuleKernels, TargetNotFound

HELP = "a dataset of the kernels in existing Warp code (files, folders, packages)"


def add_arguments(parser) -> None:
    parser.add_argument("targets", metavar="TARGET", nargs="+",
                        help="a .py file, a folder of them, or an importable module/package name (several allowed)")
    options.add_arguments(parser, output_default=None, near_dup_default=0.0)


def run(args, parser=None) -> int:
    prog = args.prog
    try:
        if args.output.endswith(".jsonl"):
            raise UsageError(f"--output {args.output}: give a dataset folder (extract writes data/, stats.json and a card)")
        source = ModuleKernels.resolve(args.targets)
        spec = options.run_spec(args, source)
    except (TargetNotFound, UsageError) as exc:
        return options.error(prog, exc)
    status = options.run(prog, args, spec)
    if status == 0:
        stats = writers.read_stats(spec.out)
        counts = stats.get("source_counts", {})
        if not args.quiet:
            print(f"modules: {counts.get('modules_imported', 0)} imported, {counts.get('modules_failed', 0)} failed to "
                  f"import; kernels: {counts.get('kernels_found', 0)} found, {stats['count']} records")
        if counts.get("kernels_found", 0) and not stats["count"]:
            return 1
    return status


def main(argv: list[str] | None = None) -> int:
    return options.main_of(sys.modules[__name__], "jit-synth extract", argv)

