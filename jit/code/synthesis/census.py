"""A census of the seed half of the reference kernels: what real Warp code calls and writes.

    python -m jit.code.synthesis.census          # rebuild census.json next to this file

Counts, over the kernels of the *seed* half of Warp's examples and tests (``reference``; the
measure half is never read here): ``wp.NAME(...)`` calls in kernel and ``@wp.func`` bodies,
the ``parent>child`` idioms of kernel bodies (labelled as ``realism`` labels them), statement
kinds, the element types and dimensions of array parameters, and histograms of parameters
and statements per kernel. The generator draws its frequencies from the committed table
(``load_census``), so a run does not depend on which Warp is installed.

What it leaves out: anything about the measure half, and how the counts are used.
"""

from __future__ import annotations

import argparse
import ast
import collections
import functools
import json
import sys
from pathlib import Path

from jit.code.analysis import realism

from jit.code.analysis import reference

CENSUS_PATH = Path(__file__).with_name("census.json")
ARRAY_NDIM = {"array": 1, "array1d": 1, "array2d": 2, "array3d": 3, "array4d": 4}


@functools.cache
def load_census() -> dict:
    """The committed census table (``census.json``)."""
    return json.loads(CENSUS_PATH.read_text(encoding="utf-8"))


def _is_wp_func(fn: ast.AST) -> bool:
    return isinstance(fn, ast.FunctionDef) and any(
        isinstance(d, ast.Attribute) and d.attr == "func" and isinstance(d.value, ast.Name) and d.value.id in ("wp", "warp")
        for d in fn.decorator_list)


def _strip_wp(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text[3:] if text.startswith("wp.") else text


def array_param(annotation: ast.AST | None) -> tuple[str, int] | None:
    """(element type, ndim) of ``wp.array(dtype=X, ndim=n)``, ``wp.array2d(dtype=X)``, ``wp.array[X]``..."""
    if isinstance(annotation, ast.Subscript):
        kind, args, keywords = annotation.value, [annotation.slice], []
    elif isinstance(annotation, ast.Call):
        kind, args, keywords = annotation.func, annotation.args, annotation.keywords
    else:
        return None
    if not (isinstance(kind, ast.Attribute) and kind.attr in ARRAY_NDIM
            and isinstance(kind.value, ast.Name) and kind.value.id in ("wp", "warp")):
        return None
    named = {k.arg: k.value for k in keywords}
    dtype = named.get("dtype", args[0] if args else None)
    ndim = ARRAY_NDIM[kind.attr]
    if isinstance(named.get("ndim"), ast.Constant) and isinstance(named["ndim"].value, int):
        ndim = named["ndim"].value
    return (_strip_wp(dtype) if dtype is not None else "float32"), ndim


def _histogram(values: list[int]) -> dict[str, int]:
    return {str(k): n for k, n in sorted(collections.Counter(values).items())}


def count(files: list[tuple[str, Path]]) -> dict:
    """The census of the kernels (and ``@wp.func`` helpers) in ``files``."""
    builtins: collections.Counter = collections.Counter()
    idioms: collections.Counter = collections.Counter()
    statements: collections.Counter = collections.Counter()
    dtypes: collections.Counter = collections.Counter()
    ndims: collections.Counter = collections.Counter()
    params, sizes, read = [], [], 0
    for _, path in files:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, SyntaxError):
            continue
        read += 1
        for fn in ast.walk(tree):
            if _is_wp_func(fn):
                builtins.update(_builtin_calls(realism.scan(fn)[0]))
        for fn in realism.kernel_defs(tree):
            nodes, pairs = realism.scan(fn)
            builtins.update(_builtin_calls(nodes))
            idioms.update(pairs)
            stmts = [type(n).__name__ for n in nodes if isinstance(n, ast.stmt)]
            statements.update(stmts)
            sizes.append(len(stmts))
            params.append(len(fn.args.args))
            for arg in fn.args.args:
                found = array_param(arg.annotation)
                if found:
                    dtypes[found[0]] += 1
                    ndims[str(found[1])] += 1
    return {"warp_version": reference.distribution()["version"], "half": "seed", "files": read,
            "kernels": len(sizes), "builtins": dict(builtins), "idioms": dict(idioms),
            "statements": dict(statements), "dtypes": dict(dtypes), "array_ndim": dict(ndims),
            "params_per_kernel": _histogram(params), "statements_per_kernel": _histogram(sizes)}


def _builtin_calls(nodes: list[ast.AST]) -> list[str]:
    return [name for name in map(realism.wp_call, nodes) if name is not None]


def seed_files() -> list[tuple[str, Path]]:
    return [(rel, path) for rel, path in reference.reference_files() if reference.half_of(rel) == "seed"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=CENSUS_PATH, help="where to write the table")
    args = parser.parse_args(argv)
    table = count(seed_files())
    args.out.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{args.out}: {table['kernels']} kernels in {table['files']} files, "
          f"{len(table['builtins'])} builtins, {len(table['idioms'])} idioms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
