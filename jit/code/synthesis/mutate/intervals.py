"""Integer intervals: the arithmetic ``bounds`` interprets a kernel's index expressions with.

An interval is ``(lo, hi)``, both ends included, or None when nothing is known. ``arith``
follows ``+ - * // % & << >>`` (None where the result could be anything, e.g. a division by a
range that holds zero), ``clip`` narrows by a comparison, ``join`` merges two paths. What it
leaves out: floats, and division ``/`` (a float in Warp, unless ``bounds`` sees it cast back).
"""

from __future__ import annotations

import ast

Interval = tuple[int, int] | None


def join(a: Interval, b: Interval) -> Interval:
    if a is None or b is None:
        return None
    return min(a[0], b[0]), max(a[1], b[1])


def join_envs(a: dict | None, b: dict | None) -> dict | None:
    if a is None or b is None:
        return b if a is None else a
    out = {}
    for name in a.keys() | b.keys():
        x, y = a.get(name, b.get(name)), b.get(name, a.get(name))
        if isinstance(x, tuple) and isinstance(y, tuple):
            out[name] = join(x, y)
        else:
            out[name] = x if x == y else None
    return out


def clip(span: Interval, op: type, bound: tuple[int, int]) -> Interval:
    """``span`` where ``x <op> bound`` holds (None: nothing known)."""
    if span is None:
        return None
    lo, hi = span
    if op is ast.Lt:
        hi = min(hi, bound[1] - 1)
    elif op is ast.LtE:
        hi = min(hi, bound[1])
    elif op is ast.Gt:
        lo = max(lo, bound[0] + 1)
    elif op is ast.GtE:
        lo = max(lo, bound[0])
    elif op is ast.Eq:
        lo, hi = max(lo, bound[0]), min(hi, bound[1])
    elif op is ast.NotEq and bound[0] == bound[1]:  # ``i != 0`` with i >= 0 means i >= 1
        lo, hi = lo + (lo == bound[0]), hi - (hi == bound[0])
    return lo, hi


def arith(op: ast.operator, a, b) -> Interval:
    if not (isinstance(a, tuple) and isinstance(b, tuple)) or a[0] > a[1] or b[0] > b[1]:
        return None
    if isinstance(op, ast.Add):
        return a[0] + b[0], a[1] + b[1]
    if isinstance(op, ast.Sub):
        return a[0] - b[1], a[1] - b[0]
    if isinstance(op, ast.Mult):
        products = [x * y for x in a for y in b]
        return min(products), max(products)
    if isinstance(op, ast.FloorDiv) and b[0] > 0:
        return min(a[0] // b[0], a[0] // b[1]), max(a[1] // b[0], a[1] // b[1])
    if isinstance(op, ast.Mod) and b[0] > 0:
        return (0, min(a[1], b[1] - 1)) if a[0] >= 0 else (-(b[1] - 1), b[1] - 1)
    if isinstance(op, ast.BitAnd) and (a[0] >= 0 or b[0] >= 0):
        return 0, min(x[1] for x in (a, b) if x[0] >= 0)
    if isinstance(op, ast.RShift) and a[0] >= 0 and b[0] >= 0:
        return a[0] >> b[1], a[1] >> b[0]
    if isinstance(op, ast.LShift) and a[0] >= 0 and 0 <= b[0] and b[1] < 31:
        return a[0] << b[0], a[1] << b[1]
    return None
