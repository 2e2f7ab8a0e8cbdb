"""Lay generated Python out the way a formatter lays out real projects (``black``).

Warp's own code is formatted to 120 columns; generated kernels get the same layout, so a
signature too long for one line is wrapped one parameter per line. What it leaves out: names,
comments and how literals are spelled (black keeps ``1e-06`` as written: builders spell
constants as an author would, ``1.0e-6``).
"""

from __future__ import annotations

import collections
import functools
import re

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
    try:
        out = black.format_str(source, mode=_mode())
    except (black.InvalidInput, ValueError):
        return source
    _formatted[out] = None
    if len(_formatted) > _RECENT:
        _formatted.popitem(last=False)
    return out


def subscript_arrays(source: str) -> str:
    """``wp.array(dtype=wp.vec3)`` spelled ``wp.array[wp.vec3]`` (``ndim=2`` as ``wp.array2d[...]``): the
    same annotation, in the form Warp 1.19's own code uses. Other annotations are left as written."""

    def spelled(m: re.Match) -> str:
        nd = m["nd"] or (f"{m['ndim']}d" if m["ndim"] and m["ndim"] != "1" else "")
        return f"wp.array{nd}[{m['t']}]"

    return _ARRAY.sub(spelled, source)
