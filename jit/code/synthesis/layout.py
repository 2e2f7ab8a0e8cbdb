"""Lay generated Python out the way a formatter lays out real projects (``black``).

Warp's own code is formatted to 120 columns; generated kernels get the same layout, so a
signature too long for one line is wrapped one parameter per line. What it leaves out: names,
comments and how literals are spelled (black keeps ``1e-06`` as written: builders spell
constants as an author would, ``1.0e-6``).
"""

from __future__ import annotations

import ast
import collections
import functools
import re

from jit.code.synthesis import quick_layout

LINE_LENGTH = 120
SUBSCRIPT_SHARE = 0.65  # kernels that spell arrays wp.array[T] (Warp 1.19's own examples and tests nearly all do)
# ``wp.array(dtype=T)``, ``wp.array(dtype=T, ndim=N)`` or ``wp.arrayNd(dtype=T)`` with a type free of brackets
_ARRAY = re.compile(r"wp\.array(?P<nd>[234]d)?\(dtype=(?P<t>[\w.]+)(?:, ndim=(?P<ndim>[1234]))?\)")
_RECENT = 64  # formatted texts remembered: black's output is a fixed point, formatting it again is waste
_formatted: collections.OrderedDict[str, None] = collections.OrderedDict()


@functools.cache
def _mode():
    import black

    return black.Mode(line_length=LINE_LENGTH, target_versions={black.TargetVersion.PY310})


def format_source(source: str) -> str:
    """``source`` formatted by black; unchanged when black cannot parse it (the build reports that)."""
    import black

    if source in _formatted:  # a builder formatted it already (composed kernels are formatted to read)
        return source
    out = quick_layout.laid_out(source, LINE_LENGTH)  # black's layout where that is simple, at a tenth of the cost
    if out is None:
        try:
            out = black.format_str(source, mode=_mode())
        except (black.InvalidInput, ValueError):
            return source
    _formatted[out] = None
    if len(_formatted) > _RECENT:
        _formatted.popitem(last=False)
    return out


AIRY = 0.5  # kernels whose author sets their steps apart with blank lines (others write one dense run)


def paragraphs(source: str) -> str:
    """The kernel's steps set apart by blank lines, as many authors write them: around a loop or a
    branch of more than a guard, and before a comment that opens a step. Only the kernel's own body
    (its last ``@wp.kernel`` function, at its top level); lines that are already blank stay single."""
    tree = ast.parse(source)
    kernel = [n for n in tree.body if isinstance(n, ast.FunctionDef)
              and any("kernel" in ast.unparse(d) for d in n.decorator_list)][-1]
    lines = source.split("\n")
    body = [s for s in kernel.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]

    def block(s: ast.stmt) -> bool:
        guard = (isinstance(s, ast.If) and not s.orelse and len(s.body) == 1
                 and isinstance(s.body[0], (ast.Return, ast.Continue)))
        return isinstance(s, (ast.For, ast.While, ast.If, ast.With)) and not guard

    before = []  # 0-based line indexes a blank line goes before
    for prev, s in zip(body, body[1:]):
        start = s.lineno - 1
        while start > 0 and lines[start - 1].strip().startswith("#"):
            start -= 1  # the comments that lead the statement go with it
        opens_step = start < s.lineno - 1
        if (block(s) or block(prev) or opens_step) and lines[start - 1].strip():
            before.append(start)
    for at in reversed(before):
        lines.insert(at, "")
    return "\n".join(lines)


def subscript_arrays(source: str) -> str:
    """``wp.array(dtype=wp.vec3)`` spelled ``wp.array[wp.vec3]`` (``ndim=2`` as ``wp.array2d[...]``): the
    same annotation, in the form Warp 1.19's own code uses. Other annotations are left as written."""

    def spelled(m: re.Match) -> str:
        nd = m["nd"] or (f"{m['ndim']}d" if m["ndim"] and m["ndim"] != "1" else "")
        return f"wp.array{nd}[{m['t']}]"

    return _ARRAY.sub(spelled, source)


def _helper(src: str) -> ast.FunctionDef | None:
    """The ``@wp.func`` of ``src`` when its signature is one line (as generated helpers are)."""
    lines = src.split("\n")
    if len(lines) > 2 and lines[0] == "@wp.func" and lines[1].startswith("def ") and lines[1].endswith("):"):
        return ast.parse(src).body[0]
    return None


def _generic(a: str, b: str) -> str:
    """One annotation for two: the same one, an array of ``Any``, or ``Any``."""
    if a == b:
        return a
    if "dtype=" in a and a.split("(")[0] == b.split("(")[0]:
        return re.sub(r"dtype=[^,)]+", "dtype=Any", a)
    return "Any"


def _twins(fa: ast.FunctionDef, fb: ast.FunctionDef) -> bool:
    """Same parameters and body, different parameter types."""
    return ([x.arg for x in fa.args.args] == [x.arg for x in fb.args.args]
            and [ast.dump(n) for n in fa.body] == [ast.dump(n) for n in fb.body]
            and any(ast.unparse(x.annotation) != ast.unparse(y.annotation) for x, y in zip(fa.args.args, fb.args.args)))


def merge_twins(funcs: list[str], kernel: str) -> tuple[list[str], str, bool]:
    """One generic ``@wp.func`` (``Any`` where the types differ) for helpers written twice with the
    same body for two value types (a scalar and a vector sampler): an author writes it once. Returns
    the helpers, the kernel text with calls renamed, and whether ``Any`` is used."""
    parsed = [_helper(src) for src in funcs]
    gone: set[int] = set()
    for a, fa in enumerate(parsed):
        if fa is None or a in gone:
            continue
        for b in range(a + 1, len(parsed)):
            fb = parsed[b]
            if fb is None or b in gone or not _twins(fa, fb):
                continue
            stem = re.sub(r"_(scalar|vector|vec)(?=_|$)", "", fa.name)
            name = stem if stem != fa.name and stem not in set(re.findall(r"[A-Za-z_]\w*", kernel + "\n".join(funcs))) \
                else fa.name
            sig = ", ".join(f"{x.arg}: {_generic(ast.unparse(x.annotation), ast.unparse(y.annotation))}"
                            for x, y in zip(fa.args.args, fb.args.args))
            lines = funcs[a].split("\n")
            lines[1] = f"def {name}({sig}):"
            funcs[a] = "\n".join(lines)
            calls = re.compile(rf"\b({re.escape(fa.name)}|{re.escape(fb.name)})\(")
            kernel = calls.sub(f"{name}(", kernel)
            funcs = [f if k == a else calls.sub(f"{name}(", f) for k, f in enumerate(funcs)]
            gone.add(b)
    return [f for k, f in enumerate(funcs) if k not in gone], kernel, bool(gone)
