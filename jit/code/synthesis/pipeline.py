"""The generate command as a script: ``python jit/code/synthesis/pipeline.py --count N``.

The same as ``jit-synth generate`` (see ``jit.code.commands.generate`` for the options); kept
where the README and the design card name it. A script entry, like ``jit/cli.py``: it sits
above the commands, and nothing imports it.
"""

from __future__ import annotations

import sys

from jit.code.commands import generate


def main(argv: list[str] | None = None) -> int:
    return generate.main(argv, prog="pipeline.py")


if __name__ == "__main__":
    sys.exit(main())
