"""Benchmark tiers: how hard a kernel is to translate, from its size and the constructs it uses.

``features(python_source)`` counts what makes a translation long or tricky: lines of code
(comments, docstrings and blank lines aside), loops, structs, ``@wp.func`` helpers, tile
builtins and spatial queries (mesh, BVH, hash grid, volume). ``tier`` weighs them into easy,
medium or hard. The weights are a judgement: a loop or a helper adds about as much generated
code and as many chances to go wrong as eight plain lines. What it leaves out: measuring the
generated code (the tier must not depend on what a model is asked to produce).
"""

from __future__ import annotations

import ast
import io
import tokenize

TIERS = ("easy", "medium", "hard")
WEIGHTS = {"lines": 1, "loops": 8, "structs": 6, "helpers": 6, "tiles": 15, "queries": 15}
EASY_BELOW, HARD_FROM = 20, 45  # weighted score bounds
QUERY_PREFIXES = ("mesh_", "bvh_", "hash_grid_", "volume_")


def code_lines(source: str) -> int:
    """Lines that hold code: no blank, comment-only or docstring lines."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return sum(1 for line in source.splitlines() if line.strip() and not line.strip().startswith("#"))
    docstrings = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            docstrings.update(range(body[0].lineno, body[0].end_lineno + 1))
    lines = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                            tokenize.ENDMARKER):
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return len(lines - docstrings)


def _decorated(node: ast.AST, name: str) -> bool:
    for d in getattr(node, "decorator_list", ()):
        target = d.func if isinstance(d, ast.Call) else d
        if (isinstance(target, ast.Attribute) and target.attr == name) or (isinstance(target, ast.Name)
                                                                             and target.id == name):
            return True
    return False


def _called(node: ast.Call) -> str:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")


def features(source: str) -> dict[str, int]:
    tree = ast.parse(source)
    calls = [_called(n) for n in ast.walk(tree) if isinstance(n, ast.Call)]
    return {
        "lines": code_lines(source),
        "loops": sum(isinstance(n, (ast.For, ast.While)) for n in ast.walk(tree)),
        "structs": sum(isinstance(n, ast.ClassDef) and _decorated(n, "struct") for n in tree.body),
        "helpers": sum(isinstance(n, ast.FunctionDef) and _decorated(n, "func") for n in tree.body),
        "tiles": sum(c == "tile" or c.startswith("tile_") for c in calls),
        "queries": sum(c.startswith(QUERY_PREFIXES) for c in calls),
    }


def score(feats: dict[str, int]) -> int:
    return sum(WEIGHTS[k] * feats.get(k, 0) for k in WEIGHTS)


def tier(feats: dict[str, int]) -> str:
    s = score(feats)
    return "easy" if s < EASY_BELOW else "medium" if s < HARD_FROM else "hard"
