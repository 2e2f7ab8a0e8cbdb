"""``python -m jit.code.synthesis.mutate``: rebuild the seed list, or print a few mutants."""

from __future__ import annotations

import argparse
import random
import sys

from jit.code.synthesis import mutate as M


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m jit.code.synthesis.mutate", description=M.__doc__.split("\n")[0])
    p.add_argument("--rebuild-seeds", action="store_true", help=f"rewrite {M.SEEDS_FILE.name} from the installed Warp")
    p.add_argument("--show", type=int, metavar="N", help="print N mutants (run seed 0) with their seed and mutations")
    args = p.parse_args(argv)
    if args.rebuild_seeds:
        found = M.rebuild_seeds()
        print(f"wrote {len(found)} seeds to {M.SEEDS_FILE}")
    for i in range(args.show or 0):
        rng = random.Random(f"0:{i}:0")
        seed = rng.choices(M.seeds(), M.seed_weights())[0]
        try:
            mutant = M.mutate_seed(seed, rng, f"{i:08x}")
        except M.MutationError as exc:
            print(f"# {seed.path}:{seed.line} {seed.name}: {exc.reason}")
            continue
        print(
            f"# {seed.path}:{seed.line} {seed.name}\n# {mutant.applied}\n# launch {mutant.launch.to_dict()}\n"
            f"{mutant.source}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
